"""Texts of the demo site: a fictional town paper and its shop, written for this project.

Every name, place and event here is invented. The site (``demo.site``) wraps
these texts in several layouts; nothing else in the demo carries prose.
"""

from __future__ import annotations

from typing import NamedTuple


class Article(NamedTuple):
    slug: str
    section: str
    title: str
    author: str
    date: str
    paragraphs: tuple[str, ...]


class Product(NamedTuple):
    slug: str
    name: str
    price: str
    description: tuple[str, ...]
    specs: tuple[tuple[str, str], ...]


SITE_NAME = "The Larkmoor Courier"
PARTNER_NAME = "Valley Morning Post"
SHOP_NAME = "Courier Store"

ARTICLES: tuple[Article, ...] = (
    Article(
        "river-cleanup", "town", "Volunteers pull two tonnes of rubbish from the Elden",
        "Maya Okafor", "2026-03-02",
        (
            "More than three hundred volunteers waded into the shallows of the Elden on "
            "Saturday morning and came back with two tonnes of rubbish, the largest haul since "
            "the river clean-up began eleven years ago. Shopping trolleys, a rusted moped and "
            "a surprising number of traffic cones were hauled up the bank near the old "
            "tannery.",
            "Organiser Priya Lund said the group had changed its approach this year. Instead "
            "of walking the whole length of the river, teams concentrated on the three weirs "
            "where debris collects after winter storms. The council lent two flatbed trucks "
            "and the rowing club ferried bags across the deepest stretch.",
            "The day started at eight o'clock with a safety briefing in the car park of the "
            "rowing club. Every volunteer was given gloves, a litter picker and a bright "
            "orange tabard, and those going into the water were paired with someone who stayed "
            "on the bank with a throw line. Children under sixteen worked on the towpath and "
            "in the reed beds, where crisp packets and drinks bottles gather in thick mats.",
            "By eleven the skip outside the tannery was already full, and a second one had to "
            "be ordered from the depot. Among the stranger finds were a bathtub, a set of "
            "false teeth, a street sign from a village twenty miles upstream and a wedding "
            "ring, which was handed to the police in the hope that its owner can be traced. "
            "Most of the rubbish, however, was plastic packaging that had blown into the river "
            "from the retail park.",
            "\"People see the river at its worst on days like this,\" said Ms Lund, who has "
            "taken part in every clean-up since the first one. \"But the point is that it gets "
            "better every year. When we started we could not get near the weir for the smell. "
            "Now there are kingfishers nesting in the bank just below it.\"",
            "The council's environment officer, Rashid Hale, said the authority would install "
            "two floating booms near the retail park outfall this summer to catch litter "
            "before it reaches the main channel. He also thanked the volunteers for the "
            "sorting they had done on the bank: almost half of the haul will be recycled, "
            "including the scrap metal from the trolleys and the moped.",
            "Water bailiffs say that fish numbers below the tannery weir have doubled since "
            "the first clean-up. The next session is planned for September, when the water is "
            "low enough to reach the gravel bars under the railway bridge.",
        ),
    ),
    Article(
        "library-extension", "town", "Library extension opens with a reading room for teenagers",
        "Tom Bright", "2026-03-05",
        (
            "The Larkmoor library reopened its east wing this week after a fourteen-month "
            "building project that added a glass reading room, a recording booth and a quiet "
            "study floor. The extension was paid for by a heritage grant and a decade of book "
            "sales run by the Friends of the Library.",
            "Head librarian Ingrid Salt said the new room was designed with the help of a "
            "panel of local teenagers, who asked for long tables, plenty of sockets and no "
            "carpet. They also chose the name of the room, which will be called the Loft after "
            "the hay loft that stood on the site a century ago.",
            "The old east wing had been closed since a survey found rot in its roof timbers. "
            "Rather than patch the roof, the library trust decided to rebuild the wing "
            "entirely, keeping only the stone front wall that faces Chapel Street. The new "
            "building sits behind that wall, and from the street it looks almost exactly as it "
            "did before.",
            "Inside, the contrast could hardly be greater. The reading room has a "
            "double-height glass wall looking over the churchyard, and the teenagers' panel "
            "insisted on a wide window seat that runs the length of the room. The recording "
            "booth, which is soundproofed with panels made from recycled denim, is aimed at "
            "anyone who wants to record a podcast, practise an interview or tape their "
            "grandparents' memories of the town.",
            "At the opening on Monday, sixteen-year-old Keira Lomax, who chaired the panel, "
            "cut the ribbon with a pair of scissors borrowed from the children's library. "
            "\"Most of us do our homework in cafés because there is nowhere else to go,\" she "
            "said. \"Now there is a place that is warm, that has wifi and where nobody asks you "
            "to buy another drink.\"",
            "The library also reported that membership has risen by a fifth since the building "
            "work began, which Ms Salt put down to the pop-up branch that ran in the market "
            "hall during the closure. The pop-up will continue on Saturday mornings over the "
            "summer for people who cannot easily reach Chapel Street.",
            "Opening hours on weekday evenings will be extended until nine o'clock from April. "
            "The recording booth can be booked free of charge by anyone with a library card.",
        ),
    ),
    Article(
        "bakery-award", "food", "Corner bakery wins regional prize for its rye loaf",
        "Elena Marsh", "2026-03-07",
        (
            "A family bakery on Tanner's Row has won the regional bread championship with a "
            "dark rye loaf made from a starter that the owners say is older than their shop. "
            "Judges praised the crust and the faint taste of caraway, and placed it first "
            "among ninety entries from across the valley.",
            "Joe and Maria Pellow took over the bakery from Maria's uncle in 2009. They still "
            "bake through the night in a brick oven that has to be fired by hand, and they "
            "refuse to sell bread that is more than a day old. Leftovers go to the food bank "
            "at closing time.",
            "The starter, which the family keeps in a stoneware crock on a shelf above the "
            "oven, was brought to Larkmoor by Maria's great-grandmother when she moved from "
            "the Baltic coast in the 1920s. It is fed twice a day with rye flour and spring "
            "water, and it went on holiday with the family for years because nobody trusted a "
            "neighbour to look after it.",
            "The championship was held in a marquee at the county showground, where ninety "
            "loaves were cut open and tasted by a panel of three bakers and a food writer. The "
            "judges mark each loaf on its crust, its crumb, its flavour and how well it "
            "matches the style it was entered in. The Pellows' loaf scored full marks for "
            "flavour, which the organisers said had not happened in the rye category for "
            "several years.",
            "\"We nearly did not enter,\" Joe Pellow admitted on Tuesday, standing in a shop "
            "that smelled of caraway and warm flour. \"We bake what our customers like, not "
            "what we think judges will like. It was our daughter who filled in the form and "
            "drove the loaf to the showground in the back of her car.\"",
            "The recognition has brought a rush of orders from cafés and delicatessens outside "
            "the valley, but the couple say they will not expand beyond what their one oven "
            "can bake. Instead they are considering opening one evening a week to teach "
            "bread-making classes in the back room, something regular customers have asked "
            "about for years.",
            "The couple plan to spend the prize money on a second-hand dough mixer and an "
            "apprenticeship for a young baker. Queues on Saturday reached the post office.",
        ),
    ),
    Article(
        "cycle-lanes", "town", "Council approves protected cycle lanes on the ring road",
        "Tom Bright", "2026-03-09",
        (
            "Councillors voted by twenty-one to eight on Tuesday to build kerb-protected cycle "
            "lanes along the northern half of the ring road. The scheme replaces painted lines "
            "that cyclists had described as decoration rather than protection.",
            "The plan removes one lane of parking outside the retail park and narrows the "
            "junction at Mill Street, which saw four collisions involving bicycles last year. "
            "Traders had argued that losing parking would hurt business, but a survey by the "
            "council found that most shoppers there arrive on foot or by bus.",
            "The northern half of the ring road carries about eighteen thousand vehicles a day "
            "and is the main route for pupils cycling to Northgate School and the technical "
            "college. A count by the council last autumn recorded more than six hundred "
            "bicycles on a weekday morning, despite what one councillor called a hostile road "
            "layout.",
            "Under the approved design, a raised kerb and a strip of planting will separate "
            "the cycle lane from traffic. Bus stops will be rebuilt as islands, so that "
            "cyclists pass behind the shelter instead of weaving around buses that have pulled "
            "in. The zebra crossing outside the college will become a signal-controlled "
            "crossing with a separate phase for bicycles.",
            "Opposition councillors said the scheme was too expensive and questioned whether "
            "the cycle count would grow as much as officers predict. Councillor Gareth Wynne "
            "argued that the money would be better spent on filling potholes on the roads that "
            "everyone uses. Supporters pointed out that the scheme is largely funded by a "
            "national active travel grant that cannot be spent on road resurfacing.",
            "Local cycling campaigners, who have lobbied for protected lanes for more than a "
            "decade, watched the vote from the public gallery. \"It is not the whole ring road, "
            "but it is the half that matters most,\" said Helen Ashdown of Larkmoor Cycle "
            "Forum. \"If it works, nobody will be able to argue against finishing the job.\"",
            "Work is due to start in June and last about four months. Buses will be diverted "
            "along Quarry Lane while the Mill Street junction is rebuilt.",
        ),
    ),
    Article(
        "school-robotics", "science", "Pupils' robot reaches the national final",
        "Sana Iqbal", "2026-03-11",
        (
            "A team of six pupils from Northgate School has built a robot that sorts recycling "
            "by colour and weight, and it has carried them to the national final of a schools "
            "engineering contest. The machine, nicknamed Binsley, uses a cheap camera and a "
            "set of kitchen scales taken apart and rebuilt.",
            "The pupils spent most of the winter term after school in the physics laboratory. "
            "Their teacher, Mr Adebayo, said the hardest part was not the programming but "
            "getting the conveyor belt to stop jamming on yoghurt pots.",
            "The idea came from a lesson on waste in which the pupils learned that much of "
            "what households put in recycling bins is rejected at the sorting plant because it "
            "is in the wrong place. They visited the plant on the industrial estate and "
            "watched workers pick items off a moving belt by hand, and decided that a small "
            "machine could do part of the job.",
            "Binsley is built on a frame of aluminium rails salvaged from an old greenhouse. A "
            "camera mounted above the belt takes a picture of each item, and a program written "
            "by the pupils decides whether it is paper, plastic or metal by its colour and "
            "shape. The kitchen scales then weigh it, and a flap driven by a windscreen wiper "
            "motor pushes it into the right box.",
            "In the regional round the robot sorted forty items in four minutes with only two "
            "mistakes, both of them crumpled aluminium foil that it took for paper. The judges "
            "were particularly impressed by the pupils' logbook, which recorded every failed "
            "design, including a suction arm that sucked up a yoghurt pot and refused to let "
            "it go.",
            "\"They have learned more from the failures than from the successes,\" said Mr "
            "Adebayo. \"At the start of the year half of them had never used a soldering iron. "
            "Now they argue about motor torque at lunchtime.\" The team's captain, "
            "fourteen-year-old Ruby Chen, said they would spend the weeks before the final "
            "teaching Binsley to recognise glass.",
            "The final takes place in May. The team is raising money for the trip by repairing "
            "bicycles in the school car park on Friday afternoons.",
        ),
    ),
    Article(
        "market-hall", "town", "Market hall roof to be repaired before the summer fair",
        "Maya Okafor", "2026-03-12",
        (
            "The Victorian market hall will get a new roof before the summer fair, after "
            "inspectors found that several cast-iron brackets had cracked during the January "
            "frost. Stallholders have been moved to the square while scaffolding goes up.",
            "The repair will reuse as much of the original slate as possible. A specialist "
            "firm from the coast will recast the broken brackets in a foundry that still works "
            "from nineteenth-century patterns.",
            "The hall was built in 1872 to replace an open market that was regularly flooded "
            "when the Elden burst its banks. Its roof rests on slender iron columns and curved "
            "brackets cast in a foundry that once stood where the bus station is now, and it "
            "has been listed as a building of special historic interest since the 1970s.",
            "The damage was spotted in February by a stallholder who noticed rust-coloured "
            "streaks on the floor beneath one of the columns. Engineers who climbed into the "
            "roof found that water had been getting into a gutter joint for years, rusting the "
            "brackets from the inside until the frost split them. Two of the brackets were "
            "close to failing completely.",
            "The council's heritage officer, Fiona Dale, said the building had been lucky. \"If "
            "the frost had been a week longer, we could have been talking about a section of "
            "roof coming down,\" she said. \"Instead we have a repair that will see the hall "
            "through another century, and a chance to fix the gutters properly while the "
            "scaffolding is up.\"",
            "The repair will cost just under half a million pounds, most of it covered by the "
            "council's insurance and a grant from a heritage fund. The remainder comes from "
            "the market reserve, which is built up from stall rents. Rents will be frozen for "
            "the rest of the year to compensate traders for the disruption of working "
            "outdoors.",
            "Traders said the move to the square had been easier than they feared, although "
            "the fishmonger asked for an awning after a week of rain. The hall should reopen "
            "in the first week of July.",
        ),
    ),
    Article(
        "owl-survey", "science", "Barn owls return to the water meadows",
        "Sana Iqbal", "2026-03-14",
        (
            "Barn owls are breeding on the Elden water meadows again for the first time in "
            "twenty years, according to a survey by the county wildlife trust. Volunteers "
            "counted four nesting pairs in boxes that were put up along the hedgerows in 2021.",
            "The trust believes that rougher grass margins left by farmers have brought back "
            "the voles the owls depend on. Surveyors walked the meadows at dusk twice a week "
            "from November and listened for the birds' screeching calls.",
            "Barn owls disappeared from the meadows in the early 2000s, when the last old "
            "barns near the river were converted into houses and the rough grassland was "
            "ploughed for arable crops. Without places to nest or enough voles to eat, the "
            "birds moved away, and for years the only sightings were of single owls hunting "
            "briefly along the railway embankment.",
            "The nest box scheme was started by a retired gamekeeper, Arthur Penrose, who "
            "built the first twenty boxes in his garage from offcuts of timber donated by a "
            "sawmill. Farmers agreed to put the boxes on poles along field edges and to leave "
            "a strip of tussocky grass at least six metres wide beside their hedges, where "
            "voles can breed undisturbed.",
            "\"For the first two years we saw nothing but jackdaws and a family of squirrels,\" "
            "Mr Penrose said. \"Then last spring a farmer rang me at six in the morning to say "
            "there was an owl sitting on top of one of the poles. I do not think I have ever "
            "driven down to the meadows so fast.\"",
            "The survey also recorded kestrels, a pair of short-eared owls on passage and "
            "large numbers of field voles, which ecologists count by looking for their runs "
            "and droppings in the grass. The trust hopes to fit small cameras to two of the "
            "boxes next year so that schools can watch the chicks grow without disturbing the "
            "birds.",
            "The trust asks walkers to keep dogs on leads near the boxes between April and "
            "August, and not to approach the nests to take photographs.",
        ),
    ),
    Article(
        "theatre-season", "culture", "Playhouse announces a season of new local writing",
        "Elena Marsh", "2026-03-16",
        (
            "The Larkmoor Playhouse will stage four new plays by writers from the valley in "
            "its autumn season, the first time the theatre has given a whole season to local "
            "work. The plays were chosen from more than two hundred scripts sent in last year.",
            "Among them is a comedy about a brass band that loses its instruments on the way "
            "to a contest, and a drama set during the flood of 1968, when the river rose into "
            "the high street. Artistic director Colm Reyes said the quality of the scripts had "
            "surprised the reading panel.",
            "The scripts were submitted anonymously, and a reading panel of actors, teachers "
            "and regular audience members read every one of them over the winter. Writers "
            "ranged from a retired postman to a sixth-form student, and the four chosen plays "
            "include the first work by a writer who has never seen her script performed "
            "before.",
            "The brass band comedy, called Lost in Transit, was written by a former tuba "
            "player in the Larkmoor Silver Band and is based loosely on a real journey in "
            "1983, when the band's instruments were loaded onto the wrong coach at a service "
            "station. The flood drama, High Water, draws on interviews with people who lived "
            "through the night the river came into the high street.",
            "The other two plays are a monologue about a lighthouse keeper who refuses to "
            "leave his post after the light is automated, and a family story set in a kitchen "
            "over three generations of Sunday lunches. Each play will run for two weeks, with "
            "local actors cast alongside a small core company that will stay for the whole "
            "season.",
            "Mr Reyes said the season was a risk, because audiences tend to book for titles "
            "they know. \"But this theatre was founded by people from this town to tell stories "
            "about this town,\" he said. \"If we cannot take a chance on our own writers, nobody "
            "else will.\" Workshops for unsuccessful writers will be held in the autumn.",
            "Tickets go on sale in June, with a pay-what-you-can performance of each play on "
            "its opening Wednesday.",
        ),
    ),
    Article(
        "football-promotion", "sport", "Larkmoor Town clinch promotion with a late winner",
        "Dev Patel", "2026-03-18",
        (
            "Larkmoor Town secured promotion on Saturday with a header in the ninetieth minute "
            "from their captain, sending more than two thousand fans onto the pitch at Quarry "
            "Park. The win ends a six-year stay in the county league.",
            "The visitors had taken the lead just before half time and defended deep for most "
            "of the second half. Town equalised from a corner with twelve minutes to play, and "
            "the winner came from a long throw that bounced twice before Ben Hollis reached "
            "it.",
            "The match was played in front of the largest crowd at Quarry Park for almost "
            "forty years, with supporters standing three deep along the touchline and children "
            "sitting on the wall behind the goal. Many had arrived more than an hour early, "
            "and the club's tea bar ran out of pies before the teams came out.",
            "Town started nervously and almost fell behind in the opening minutes, when the "
            "visitors' striker hit the post from close range. The goal that did come, shortly "
            "before the interval, followed a misplaced pass in midfield and a low shot that "
            "skidded under the goalkeeper's dive. The home side went in at half time to a "
            "nervous silence.",
            "Hollis, a twenty-three-year-old electrician who joined the club from the youth "
            "team, said afterwards that he had barely seen the ball before it hit his head. \"I "
            "just threw myself at it,\" he said. \"When I got up, there were people everywhere. "
            "Somebody's dad was hugging me and I had no idea who he was.\"",
            "The club's chairman, Neil Fairbrother, said the promotion would bring bigger "
            "crowds and longer away trips, and that the club would need more volunteers to run "
            "match days. The supporters' trust has already launched an appeal to pay for the "
            "new floodlights, which league rules require before the club can play evening "
            "matches at the higher level.",
            "Manager Ruth Akers said the club would keep faith with the young squad that won "
            "the title. The ground will need new floodlights before the start of next season.",
        ),
    ),
    Article(
        "bus-timetable", "town", "Evening buses return to the hill villages",
        "Maya Okafor", "2026-03-20",
        (
            "Evening buses will run again to the hill villages of Coldharbour and Netherby "
            "from next month, three years after the service was cut. The last departure from "
            "the bus station will leave at twenty past eleven.",
            "The route is funded for two years by a county transport grant. Residents had "
            "collected more than a thousand signatures, pointing out that shift workers at the "
            "hospital had no way of getting home after late duties.",
            "The old evening service was withdrawn when the previous operator said it was "
            "carrying fewer than ten passengers a night. Campaigners argued that the figure "
            "was low because the timetable had been cut back so far that nobody could rely on "
            "it, and that a service people could plan around would be used.",
            "Among those who collected signatures was Carol Jenkins, a nurse who lives in "
            "Coldharbour and works late shifts at Larkmoor General. For three years she has "
            "paid for taxis home or relied on lifts from colleagues. \"On a bad month the taxis "
            "cost me more than my rent,\" she said. \"Some of the younger staff simply turned "
            "down evening shifts because they could not get home.\"",
            "The new timetable has buses every hour until half past seven and then three later "
            "departures, timed to meet the end of hospital shifts and the last train from the "
            "city. The fares will be the same as on daytime services, and the county's "
            "concessionary passes will be valid on every journey.",
            "The county transport committee will review the passenger numbers after a year. "
            "Its chair, Councillor Amir Rahman, said the grant gave the service a fair chance "
            "to prove itself. \"If people use it, we will fight to keep it,\" he said. \"But they "
            "need to use it.\" The first evening bus leaves the station on the fourth of next "
            "month.",
            "The operator will use a smaller electric bus on the evening runs, which can turn "
            "in the narrow lanes above Netherby church.",
        ),
    ),
    Article(
        "allotment-waiting-list", "town", "Allotment waiting list passes four hundred names",
        "Tom Bright", "2026-03-22",
        (
            "The waiting list for an allotment in Larkmoor has passed four hundred names, and "
            "new applicants are being told to expect a wait of up to seven years. The council "
            "owns five sites with a little over two hundred plots between them.",
            "The allotment society wants the council to split the largest plots in half, as "
            "many tenants struggle to keep a full plot in order. It has also asked for a strip "
            "of unused land behind the cemetery to become a sixth site.",
            "Demand for plots has grown steadily since the pandemic, when many people "
            "discovered gardening, and it has not fallen back. The society says that most new "
            "applicants are young families living in flats without gardens, many of whom want "
            "to grow vegetables to cut their food bills.",
            "At the Mill Lane site, which has eighty plots, the secretary keeps the waiting "
            "list in a lever-arch file that has had to be replaced twice this year. Plots "
            "rarely become free, because tenants tend to keep them for decades. One tenant at "
            "the site has worked the same plot since 1974 and still grows prize-winning leeks.",
            "The society believes that splitting the largest plots would allow about sixty "
            "more families onto the sites within a year. Its chair, Dorothy Fenn, said many "
            "older tenants would welcome a smaller plot. \"A full plot is a lot of digging,\" "
            "she said. \"Half a plot is plenty for most people, and it means somebody else gets "
            "the chance we had.\"",
            "The land behind the cemetery has been empty since a row of council garages was "
            "demolished there ten years ago. The society has offered to clear it with "
            "volunteers if the council pays for a fence and a water connection. It says the "
            "site could take forty new plots, as well as a shared polytunnel for people who "
            "cannot manage a plot of their own.",
            "A council spokesperson said both ideas would be considered at the parks committee "
            "in May.",
        ),
    ),
    Article(
        "museum-hoard", "culture", "Museum puts medieval coin hoard on display",
        "Elena Marsh", "2026-03-24",
        (
            "A hoard of more than six hundred silver coins found by a metal detectorist near "
            "Netherby has gone on display at the town museum. The coins were buried in a clay "
            "pot around the middle of the fourteenth century.",
            "Curator Amos Vane said the hoard was probably hidden by a wool merchant during a "
            "period of unrest, and never recovered. Most of the coins were struck in the "
            "valley, but a few came from as far away as Flanders.",
            "The coins were found two years ago by a detectorist, Gavin Rowe, who had "
            "permission to search a field that was about to be ploughed. When his detector "
            "gave a strong signal near a hedge, he dug down and hit the shoulder of the pot. "
            "Following the law on treasure finds, he stopped digging and called the county's "
            "finds liaison officer.",
            "Archaeologists lifted the pot in a single block of soil and took it to a "
            "conservation laboratory, where the coins were removed one at a time over several "
            "months. Many were stuck together by corrosion and had to be separated with fine "
            "tools under a microscope. The pot itself, a plain cooking vessel, was cracked but "
            "almost complete.",
            "The latest coins in the hoard date it to the 1340s, a period of heavy taxation "
            "and poor harvests in the valley. Dr Vane said the total was roughly what a "
            "skilled worker would have earned over several years. \"Whoever buried it meant to "
            "come back for it,\" he said. \"We will never know why they did not.\"",
            "The exhibition shows the coins alongside the pot, the detector Mr Rowe used and a "
            "film of the excavation. Visitors can also handle replica coins and try to work "
            "out which king is shown on each one. Mr Rowe, who receives half of the reward "
            "under the treasure rules, has given his share to the museum's education fund.",
            "The museum raised the money to buy the hoard through a public appeal in which "
            "children collected coins of their own. Entry to the exhibition is free.",
        ),
    ),
    Article(
        "hospital-parking", "town", "Hospital car park to charge by the minute",
        "Dev Patel", "2026-03-26",
        (
            "Visitors to Larkmoor General will pay for parking by the minute from May, "
            "replacing the hourly rate that patients have long complained about. Blue badge "
            "holders and parents of children on the ward will continue to park free.",
            "The hospital trust says the new machines read number plates, so drivers no longer "
            "need to guess how long an appointment will take. Patient groups welcomed the "
            "change but asked for the price cap for a whole day to be lowered.",
            "The hourly charge has been a source of complaint since it was introduced, because "
            "clinics often run late and patients who overstay by a few minutes have had to pay "
            "for a whole extra hour. The local patients' group says it has received more "
            "letters about parking than about waiting times.",
            "Under the new system, cameras at the entrance read each car's number plate and a "
            "driver pays on leaving, either at a machine, by phone or online until midnight on "
            "the same day. The trust says the system will also end the queues at the pay "
            "machines in the main entrance, which at busy times stretch out of the door.",
            "The charge will be set at five pence a minute, which the trust says is cheaper "
            "than the current tariff for any stay of under two hours. The daily maximum will "
            "stay at twelve pounds, which patient representatives say is too high for "
            "relatives who sit with a seriously ill family member all day.",
            "Staff parking is not affected by the change. A spokesperson for the trust said a "
            "consultation on staff parking would follow later in the year, once the new spaces "
            "on the laundry site are finished. Nurses' representatives have asked for shift "
            "workers to be given priority for spaces closest to the building at night.",
            "The trust will also add sixty spaces on the former laundry site, which has been "
            "empty since the laundry moved out of town.",
        ),
    ),
    Article(
        "choir-competition", "culture", "Chapel choir takes first prize at the eisteddfod",
        "Elena Marsh", "2026-03-28",
        (
            "The Ebenezer Chapel choir has won first prize in the mixed choir category at the "
            "spring eisteddfod, beating eleven choirs from larger towns. The choir has forty "
            "members, the youngest fifteen and the oldest eighty-seven.",
            "Their winning programme included a hymn tune written by a Larkmoor quarryman in "
            "1902, which the conductor found in the chapel archive. The adjudicator described "
            "the performance as warm and beautifully balanced.",
            "The Ebenezer choir was formed in 1889 by the quarry owner's wife, who wanted to "
            "give the men of the village something to do other than drink. For much of the "
            "last century it sang almost entirely in chapel services, and it only began "
            "entering competitions again five years ago, when its present conductor, Gwen "
            "Probert, took over.",
            "Under Mrs Probert the choir has grown from twenty members to forty, and for the "
            "first time in its history the tenors outnumber the basses. Rehearsals are held on "
            "Tuesday evenings in the chapel vestry, where a coal stove keeps the room warm in "
            "winter, and new members are welcome without an audition.",
            "The quarryman's hymn was discovered in a box of hymn books that had been stored "
            "in the chapel attic. It was written on a single sheet of music paper, signed only "
            "with the initials D. W., and Mrs Probert spent months in the county archive "
            "before identifying its composer as David Watkin, a slate splitter who died in a "
            "quarry accident in 1911.",
            "\"When we sang it on the stage I looked at the back row and saw three grown men "
            "crying,\" Mrs Probert said. \"One of them was Watkin's great-grandson, who only "
            "found out about the hymn when we told him last autumn.\" The choir plans to record "
            "the hymn and give copies to every school in the valley.",
            "The choir will sing the programme again at a free concert in the chapel on Easter "
            "Sunday evening.",
        ),
    ),
    Article(
        "solar-school", "science", "Solar panels cut school energy bills by a third",
        "Sana Iqbal", "2026-03-30",
        (
            "Solar panels installed on the roofs of three Larkmoor primary schools last summer "
            "have cut their electricity bills by about a third, figures from the council show. "
            "The savings are larger than the council had forecast.",
            "Pupils at Riverside Primary check a display in the entrance hall every morning "
            "that shows how much power the panels produced the day before. Their headteacher "
            "said the display had done more for science lessons than any textbook.",
            "The panels were fitted during the summer holidays on the roofs of Riverside, "
            "Hillcrest and St Anne's primary schools, which were chosen because their roofs "
            "face south and had been replaced recently. About six hundred panels were "
            "installed in total, covering a little over a thousand square metres.",
            "Over the autumn and winter months the panels produced less electricity than in "
            "the summer, as expected, but the schools still saved money because most of their "
            "energy use happens during daylight hours. The council's figures show that on a "
            "sunny day in June the schools produced more electricity than they used and "
            "exported the surplus to the grid.",
            "At Riverside Primary the display in the entrance hall has become a daily talking "
            "point. Pupils record the figures in a chart, and a class of ten-year-olds used a "
            "year of readings to work out how much carbon the panels had saved, which they "
            "presented to the council's climate committee in a short talk.",
            "The council's energy manager, Priti Shah, said the savings would pay for the "
            "panels within nine years, well within their expected life of twenty-five years. "
            "The savings are being returned to the schools' budgets. Hillcrest has already "
            "spent part of its share on new books for the library and a set of musical "
            "instruments.",
            "The council plans to fit panels on four more schools during the summer holidays, "
            "and is looking at batteries to store power for the winter months.",
        ),
    ),
    Article(
        "fell-race", "sport", "Record field for the Beacon fell race",
        "Dev Patel", "2026-04-01",
        (
            "A record four hundred runners took on the Beacon fell race on Sunday, climbing "
            "nearly six hundred metres from the cricket field to the summit cairn and back. "
            "The race was won by a forestry worker from Coldharbour in a little over forty "
            "minutes.",
            "Mist on the top made navigation difficult, and several runners followed the wrong "
            "wall down into the next valley. Marshals with radios guided them back, and nobody "
            "needed the mountain rescue team.",
            "The Beacon race has been run every spring since 1953, when two shepherds "
            "challenged each other to a race to the summit and back for a pint of beer. It is "
            "now one of the best-known short fell races in the region, attracting runners from "
            "clubs across the north as well as walkers who take part for the challenge.",
            "The winner, Callum Reid, works for the forestry commission and trains by running "
            "up the hill before work several times a week. He said the mist at the top had "
            "made the descent the hardest he had known. \"You cannot see more than ten metres, "
            "so you just follow the wall and hope,\" he said. \"I nearly ran into a sheep "
            "twice.\"",
            "The women's race was won for the third year running by Alys Morgan, a veterinary "
            "surgeon from Netherby, who finished eleventh overall. The oldest finisher was a "
            "seventy-nine-year-old retired teacher who has run the race every year since 1972, "
            "and the youngest was a sixteen-year-old from the school cross-country team.",
            "Sunday's race raised more than four thousand pounds for the mountain rescue team, "
            "which provides safety cover on the day. Its leader, Dafydd Price, said the team "
            "had been kept busy all the same, treating sprained ankles and grazed knees at the "
            "finish, and that the race had been a good training exercise for its radio "
            "operators.",
            "The organisers will cap the field next year to protect the path across the bog, "
            "which is being repaired with stone slabs carried up by helicopter.",
        ),
    ),
    Article(
        "cafe-repair", "food", "Repair café fixes its thousandth kettle",
        "Maya Okafor", "2026-04-03",
        (
            "The repair café that meets in the scout hut on the first Saturday of each month "
            "has fixed its thousandth kettle. Volunteers with soldering irons and sewing "
            "machines have also mended lamps, toasters, coats and a surprising number of "
            "accordions.",
            "Founder Walter Briggs, a retired electrician, said most broken appliances only "
            "need a new fuse or a cleaned contact. The café asks for a donation rather than a "
            "fee, and serves tea and cake while people wait.",
            "The café was started six years ago by Mr Briggs and a handful of friends after he "
            "noticed how many working appliances were thrown away at the tip. It now has about "
            "twenty regular volunteers, including a retired seamstress, two engineering "
            "students and a former television repairman who can mend almost anything with a "
            "valve in it.",
            "Visitors register their item at the door and are given a numbered ticket, and "
            "then sit with a volunteer while the repair is attempted. The idea is that the "
            "owner watches and learns, so that next time they might be able to fix it "
            "themselves. Volunteers say that about two thirds of the items brought in leave in "
            "working order.",
            "The thousandth kettle belonged to Margaret Wilde, a retired nurse, who brought it "
            "in because the switch had stopped clicking off. Mr Briggs found that limescale "
            "had clogged the sensor, cleaned it and had it working again in ten minutes. \"I "
            "was about to buy a new one,\" Mrs Wilde said. \"This one is older than my grandson "
            "and it makes better tea.\"",
            "The café estimates that it has saved around four tonnes of electrical goods from "
            "landfill since it started. The council's waste team has asked the volunteers to "
            "run a stall at the recycling centre this summer, where they will try to repair "
            "items before people throw them into the skips.",
            "The volunteers are looking for someone who can repair bicycles and clocks, the "
            "two things they are asked about most often and can rarely help with.",
        ),
    ),
    Article(
        "flood-defences", "town", "New flood wall tested by the spring tide",
        "Tom Bright", "2026-04-05",
        (
            "The new flood wall along Riverside Walk faced its first real test during last "
            "week's spring tide, when the Elden rose higher than at any time since 2014. The "
            "wall held, and no homes were flooded.",
            "The wall includes glass panels so that people walking along the river can still "
            "see the water. Some residents had worried that the panels would crack under "
            "pressure, but engineers said they are stronger than the concrete sections around "
            "them.",
            "The wall was built after the flood of 2014, when water from the Elden poured into "
            "more than eighty homes on Riverside Walk and the streets behind it. Some families "
            "were not able to return home for almost a year, and the insurance claims ran into "
            "millions of pounds.",
            "Construction took two years and caused long disruption to the riverside path, "
            "which was closed while foundations were sunk deep into the gravel. The finished "
            "wall is just over a metre high along most of its length, rising to almost two "
            "metres where the river bends towards the houses.",
            "On the night of the tide, residents gathered on the footpath to watch the water "
            "rise. Ken Morris, whose house was flooded to the height of the kitchen worktops "
            "in 2014, said he had not slept until the level began to fall. \"We stood there "
            "with torches watching the glass,\" he said. \"When it held, people were clapping. "
            "Some of my neighbours were in tears.\"",
            "Engineers from the Environment Agency were on site throughout the night to check "
            "for leaks at the joints between sections. They found two small seepages, which "
            "are being sealed this week. The agency said the wall had performed as designed "
            "and that the readings from the night would be used to check its computer models "
            "of the river.",
            "The Environment Agency will inspect the wall again in the autumn, and plans to "
            "plant willows on the opposite bank to slow the water upstream.",
        ),
    ),
    Article(
        "chess-club", "culture", "Chess club marks its centenary with a giant board",
        "Dev Patel", "2026-04-07",
        (
            "The Larkmoor chess club celebrated its hundredth birthday by painting a giant "
            "chess board on the paving of the market square. Members played exhibition games "
            "with pieces made by the woodwork class at the technical college.",
            "The club was founded in 1926 by railway workers who played during their lunch "
            "breaks in the signal box. It now has sixty members and meets on Thursday evenings "
            "above the Red Lion.",
            "The founders played on a board balanced on a stack of timetables, using pieces "
            "carved from a broken railway sleeper. That original set, with one knight replaced "
            "by a cotton reel after it was lost in the 1950s, is still kept in a glass case in "
            "the room above the Red Lion where the club meets.",
            "The club's history has been compiled by its oldest member, ninety-one-year-old "
            "Harold Pike, who joined as a boy in 1947. He has found records of matches played "
            "by post against clubs in Canada and Australia, and of a simultaneous display in "
            "1936 at which a visiting champion played thirty of the club's members at once and "
            "lost only one game.",
            "The giant board in the square was painted over a weekend by members and students "
            "from the college's art department. The pieces, the tallest of which reaches the "
            "waist of an adult, are made of plywood and painted black and white. On the "
            "opening day queues formed to play a game, and a crowd gathered to watch a final "
            "between the club's champion and a twelve-year-old from the junior section.",
            "The club secretary, Nadia Karim, said membership had grown since online chess "
            "became popular, and that the junior section now has more members than the adult "
            "one. \"Children come in having played thousands of games on a phone,\" she said. "
            "\"What they have never done is sit across a board from a real person and shake "
            "hands at the end.\"",
            "The board will stay in the square all summer, and the pieces can be borrowed from "
            "the tourist information office.",
        ),
    ),
    Article(
        "orchard-planting", "food", "Community orchard planted on the old rail yard",
        "Elena Marsh", "2026-04-09",
        (
            "Forty fruit trees have been planted on the old rail yard at the end of Station "
            "Road, turning a patch of weeds and broken concrete into a community orchard. The "
            "varieties include three apples that were once grown only in the valley.",
            "Grafts for the old varieties came from a single tree in a garden in Netherby, "
            "whose owner had kept it alive for sixty years. The orchard group hopes to sell "
            "young trees grafted from the new planting to pay for fencing and a water supply.",
            "The rail yard closed in the 1960s, and for decades the site was used only for "
            "storing road salt and abandoned cars. The council agreed three years ago to lease "
            "it to the orchard group for a peppercorn rent on condition that the group removed "
            "the concrete and tested the soil for contamination.",
            "Volunteers spent much of last year breaking up the concrete with hired machinery "
            "and carting it away, and a local haulier brought in topsoil free of charge. The "
            "trees were planted in raised beds in the areas where the soil was found to "
            "contain old engine oil, and the rest of the site has been sown with wildflowers.",
            "The three rare varieties are the Larkmoor Pippin, a small yellow dessert apple, "
            "the Elden Russet and a cooking apple known locally as the Quarryman's Wife. All "
            "three had vanished from nurseries, and for years the only known tree of the "
            "Quarryman's Wife was the one in Netherby, planted by the owner's father in the "
            "1960s.",
            "\"When we took the cuttings I realised that if that tree had blown down, the "
            "variety would have been gone for ever,\" said the group's chair, Bryony Hughes. "
            "\"Now there are twelve of them on the yard and another dozen in gardens around the "
            "town.\" The group will hold a blossom day in the orchard next spring.",
            "The first fruit is expected in three years. Until then, volunteers will meet on "
            "Sunday mornings to mulch, weed and protect the young trunks from rabbits.",
        ),
    ),
)

PRODUCTS: tuple[Product, ...] = (
    Product(
        "enamel-mug", "Courier enamel mug", "£12.00",
        (
            "A white enamel mug with a blue rim and the Courier's masthead printed on the side. "
            "It survives camping trips, garden sheds and being dropped on the quarry path.",
            "Hand wash only: the dishwasher dulls the print after a few months.",
        ),
        (("Capacity", "350 ml"), ("Material", "Enamelled steel"), ("Weight", "220 g")),
    ),
    Product(
        "river-print", "Elden at dawn, art print", "£35.00",
        (
            "A giclée print of a watercolour by a Larkmoor painter showing mist lifting off the "
            "river below the tannery weir. Printed on heavy cotton rag paper with archival inks.",
            "Sent rolled in a tube, unframed, with a certificate signed by the artist.",
        ),
        (("Size", "A3"), ("Paper", "310 gsm cotton rag"), ("Edition", "Open")),
    ),
    Product(
        "tote-bag", "Market day tote bag", "£9.50",
        (
            "A sturdy canvas bag that holds a week of vegetables from the market hall, with "
            "long handles that sit comfortably on the shoulder.",
            "The pattern shows the hall's iron brackets and was drawn by a pupil at Northgate "
            "School.",
        ),
        (("Material", "Organic cotton canvas"), ("Handles", "65 cm"), ("Colour", "Natural")),
    ),
    Product(
        "walking-map", "Beacon and water meadows walking map", "£7.99",
        (
            "A folded waterproof map covering every footpath from the Beacon summit to the "
            "water meadows, with twelve circular walks marked in red.",
            "Includes bus stops for the hill villages and the opening times of the cafés along "
            "the way.",
        ),
        (("Scale", "1:25,000"), ("Format", "Folded, waterproof"), ("Walks", "12")),
    ),
    Product(
        "rye-cookbook", "Valley baking, a cookbook", "£18.00",
        (
            "Sixty recipes collected from bakers across the valley, from Saturday rye loaves to "
            "the spiced buns sold at the summer fair.",
            "Each recipe is tested in an ordinary kitchen oven and comes with notes on keeping a "
            "sourdough starter alive through a busy week.",
        ),
        (("Pages", "224"), ("Binding", "Hardback"), ("Photographs", "Colour throughout")),
    ),
    Product(
        "owl-box", "Barn owl nest box kit", "£64.00",
        (
            "A flat-packed nest box built to the wildlife trust's design, the same model that "
            "brought barn owls back to the water meadows.",
            "Made from untreated larch, with a removable inspection panel and fixing brackets "
            "for a pole or a barn wall.",
        ),
        (("Timber", "Larch, 18 mm"), ("Assembled size", "70 x 45 x 45 cm"), ("Tools", "Screwdriver")),
    ),
    Product(
        "archive-photo", "Flood of 1968 archive photograph", "£22.00",
        (
            "A reprint from the Courier's glass plate archive: the high street under a metre of "
            "water, with a rowing boat moored outside the chemist.",
            "Printed on matt photographic paper and mounted on grey card ready for framing.",
        ),
        (("Size", "30 x 40 cm"), ("Mount", "Grey card"), ("Year", "1968")),
    ),
    Product(
        "bird-feeder", "Copper bird feeder", "£27.50",
        (
            "A hanging seed feeder with a copper roof that weathers to green over a winter or "
            "two. The feeding ports are sized for finches and tits.",
            "Comes apart without tools so it can be scrubbed between refills.",
        ),
        (("Height", "32 cm"), ("Capacity", "1.2 litres of seed"), ("Material", "Copper and glass")),
    ),
    Product(
        "chess-set", "Centenary chess set", "£45.00",
        (
            "A turned beech chess set made by the woodwork class at the technical college to "
            "mark the chess club's hundredth birthday.",
            "The kings carry a tiny carved signal box, a nod to the railway workers who founded "
            "the club.",
        ),
        (("King height", "9 cm"), ("Wood", "Beech and walnut"), ("Board", "Not included")),
    ),
    Product(
        "rain-jacket", "Fell runner's rain jacket", "£89.00",
        (
            "A light, packable jacket with taped seams and a hood that stays put in a crosswind "
            "on the Beacon ridge.",
            "It folds into its own chest pocket and weighs less than a bar of soap and a banana.",
        ),
        (("Weight", "180 g"), ("Sizes", "XS to XXL"), ("Seams", "Fully taped")),
    ),
    Product(
        "honey-jar", "Water meadow honey", "£8.25",
        (
            "Runny honey from hives kept on the edge of the water meadows, where the bees work "
            "clover, bramble and willow.",
            "Every jar is labelled with the date it was extracted and the name of the beekeeper.",
        ),
        (("Weight", "340 g"), ("Type", "Runny"), ("Origin", "Larkmoor water meadows")),
    ),
    Product(
        "choir-cd", "Ebenezer Chapel choir live recording", "£11.00",
        (
            "The prize-winning programme from the spring eisteddfod, recorded live in the chapel "
            "with a single pair of microphones.",
            "Includes the quarryman's hymn of 1902 and a sleeve note on how it was found in the "
            "chapel archive.",
        ),
        (("Tracks", "14"), ("Length", "58 minutes"), ("Format", "CD and download code")),
    ),
    Product(
        "apple-trees", "Heritage apple tree, bare root", "£24.00",
        (
            "A young tree grafted from the orchard on the old rail yard, choosing between three "
            "apple varieties once found only in this valley.",
            "Bare-root trees are sent between November and March and should be planted within a "
            "week of arrival.",
        ),
        (("Rootstock", "MM106"), ("Age", "Two years"), ("Pollination group", "C")),
    ),
    Product(
        "repair-kit", "Repair café toolkit", "£31.00",
        (
            "The kit the repair café volunteers reach for first: precision screwdrivers, a fuse "
            "tester, spare fuses, a seam ripper and a small tub of contact cleaner.",
            "Packed in a roll-up canvas wallet with a card of safety tips for mains appliances.",
        ),
        (("Pieces", "27"), ("Case", "Canvas roll"), ("Weight", "640 g")),
    ),
)

SECTIONS = ("town", "science", "culture", "sport", "food")

# Boilerplate blocks: shared by many pages, so a fingerprint must look past them.
SITE_ABOUT = (
    "The Larkmoor Courier has reported on the town and the Elden valley since 1881. It is "
    "owned by a community trust and staffed by a small team of reporters and volunteers."
)
SITE_FOOTER = (
    "Copyright The Larkmoor Courier Trust. Registered office: 4 Bridge Street, Larkmoor. "
    "We follow the editors' code of practice; to report an error write to the corrections "
    "desk. Our privacy notice explains how we use cookies and what data we keep."
)
NEWSLETTER = (
    "Get the Courier in your inbox every Friday morning: the week's stories, the events "
    "diary and the crossword answers."
)
PARTNER_FOOTER = (
    "Valley Morning Post syndicates selected stories from partner titles across the region. "
    "All rights reserved by the original publishers. Terms of use, accessibility statement "
    "and advertising enquiries are listed on our help pages."
)
PARTNER_ADS = (
    "Spring sale at Hartley's Garden Centre: twenty per cent off all compost this weekend.",
    "Netherby Motors: MOT tests while you wait, courtesy car available on request.",
    "Learn to swim this summer at Larkmoor Leisure Centre, lessons for every age.",
    "Coldharbour Inn: Sunday roasts served from noon, families and walkers welcome.",
    "Find your next home with Pryce and Daughters, the valley's estate agents since 1952.",
    "Elden Valley Credit Union: saving made simple, loans made fair.",
)
SITE_ADS = (
    "Advertise with the Courier: reach twelve thousand readers every week.",
    "Larkmoor Carpets: free fitting on orders placed before the end of the month.",
    "Quarry Park season tickets for next season are on sale now at the club shop.",
)
SHOP_SIDEBAR = (
    "Every purchase from the Courier Store supports independent local journalism. Items are "
    "packed by volunteers in the old print works and posted from the Bridge Street office. "
    "Orders placed before two o'clock on a weekday are sent the same day."
)
SHOP_FOOTER = (
    "Delivery within the United Kingdom costs three pounds ninety-five and is free on orders "
    "over forty pounds. Unused items can be returned within thirty days for a full refund; "
    "the return label is in the parcel. Prices include VAT. The Courier Store is run by "
    "Larkmoor Courier Trading Limited, a wholly owned subsidiary of the Larkmoor Courier "
    "Trust, company number 0481516, registered in England and Wales. Card payments are "
    "processed securely by our payment provider and we never see your card number."
)
COOKIE_NOTICE = (
    "We use cookies to remember your basket and to count visits. You can change your choice "
    "at any time from the privacy link at the bottom of the page."
)
